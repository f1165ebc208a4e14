-- The read-only user sqlgate connects as (docs/mysql.md), for MariaDB. Run it as an
-- administrator once per database, with the database and the user's password in variables:
--   mariadb -e "SET @db = 'academic', @password = '...'; SOURCE docs/mysql-reader.sql"
-- It is idempotent: running it again changes nothing (the password of an existing user stays).

-- The user, once per server. (Statements are built with PREPARE: MariaDB takes no variable as
-- a name or a password.)
SET @statement = CONCAT('CREATE USER IF NOT EXISTS sqlgate_reader@''%'' IDENTIFIED BY ',
                        QUOTE(@password));
PREPARE statement FROM @statement;
EXECUTE statement;

-- Reading the tables of the database, and nothing else: no writes, no temporary tables, no
-- FILE privilege (LOAD_FILE, SELECT ... INTO OUTFILE), no PROCESS or SUPER.
SET @statement = CONCAT('GRANT SELECT, SHOW VIEW ON `', REPLACE(@db, '`', '``'),
                        '`.* TO sqlgate_reader@''%''');
PREPARE statement FROM @statement;
EXECUTE statement;
DEALLOCATE PREPARE statement;

-- Bounds that hold even outside sqlgate: a statement time bound (seconds) and a cap on the
-- user's connections (sqlgate holds at most one per worker, and one more to stop a query).
ALTER USER sqlgate_reader@'%' WITH MAX_STATEMENT_TIME 60 MAX_USER_CONNECTIONS 64;
