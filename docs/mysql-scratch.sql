-- The user state cases' scratch copies are made by (docs/state.md), for MariaDB and MySQL. It
-- creates sqlgate's own databases (`sqlgate_scratch_` and 16 hex digits), copies the original
-- into one per worker and drops it when done; the original it only reads, and sqlgate refuses
-- it when it may change it. Run it as an administrator once per database, with the database
-- and the user's password in variables:
--   mariadb -e "SET @db = 'bookshop', @password = '...'; SOURCE docs/mysql-scratch.sql"
-- It is idempotent: running it again changes nothing (the password of an existing user stays).

-- The user, once per server. (Statements are built with PREPARE: MariaDB takes no variable as
-- a name or a password.)
SET @statement = CONCAT('CREATE USER IF NOT EXISTS sqlgate_scratch@''%'' IDENTIFIED BY ',
                        QUOTE(@password));
PREPARE statement FROM @statement;
EXECUTE statement;

-- Everything a state case may do, on sqlgate's scratch databases only: create and drop them,
-- write their tables, create indexes, views and triggers.
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, REFERENCES, CREATE VIEW,
      SHOW VIEW, TRIGGER ON `sqlgate\_scratch\_%`.* TO sqlgate_scratch@'%';

-- Reading the original, views' definitions included, and nothing else.
SET @statement = CONCAT('GRANT SELECT, SHOW VIEW ON `', REPLACE(@db, '`', '``'),
                        '`.* TO sqlgate_scratch@''%''');
PREPARE statement FROM @statement;
EXECUTE statement;
DEALLOCATE PREPARE statement;

-- A cap on the user's connections that holds even outside sqlgate (sqlgate holds one per
-- worker, and one more to stop a statement).
ALTER USER sqlgate_scratch@'%' WITH MAX_USER_CONNECTIONS 64;
