-- The read-only role sqlgate connects as (docs/postgres.md). Run it as the databases' owner
-- or a superuser, once per database:  psql -v db=academic -d academic -f postgres-reader.sql
-- It is idempotent: running it again changes nothing.

-- The role, once per server (a LOGIN without a password: give one with \password, or let
-- pg_hba.conf decide how it authenticates).
SELECT 'CREATE ROLE sqlgate_reader LOGIN'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sqlgate_reader') \gexec

-- Nobody else connects or creates temporary tables by default; the reader may connect.
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"db" TO sqlgate_reader;

-- Reading the tables, and nothing else: no CREATE in the schema, SELECT on every table
-- (also those created later by this owner).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO sqlgate_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO sqlgate_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO sqlgate_reader;

-- Bounds that hold even outside sqlgate: read-only sessions, a statement timeout, and limits
-- on the memory of a sort or hash and on temporary files (temp_file_limit needs a superuser).
ALTER ROLE sqlgate_reader SET default_transaction_read_only = on;
ALTER ROLE sqlgate_reader SET statement_timeout = '60s';
ALTER ROLE sqlgate_reader SET work_mem = '64MB';
ALTER ROLE sqlgate_reader SET temp_file_limit = '1GB';
