-- The role state cases' statements run as (docs/state.md): it may change the tables, inside
-- transactions that sqlgate always rolls back. Run it as a superuser, once per database:
--   psql -v db=bookshop -v owner=bookshop_owner -d bookshop -f postgres-scratch.sql
-- `owner` is the role owning the tables (PostgreSQL lets only a table's owner alter, index or
-- drop it); it must not be a superuser, or the scratch role could become one, and sqlgate
-- refuses it. It is idempotent: running it again changes nothing.

SELECT 'CREATE ROLE sqlgate_scratch LOGIN'
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sqlgate_scratch') \gexec

-- Connecting, creating tables, views and indexes in schema public, and everything the tables'
-- owner may do to them (as a member of that role).
GRANT CONNECT ON DATABASE :"db" TO sqlgate_scratch;
GRANT USAGE, CREATE ON SCHEMA public TO sqlgate_scratch;
GRANT :"owner" TO sqlgate_scratch;

-- Sequences drawn by INSERTs are set back after each case (setval needs UPDATE).
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO sqlgate_scratch;

-- Bounds that hold even outside sqlgate.
ALTER ROLE sqlgate_scratch SET statement_timeout = '60s';
ALTER ROLE sqlgate_scratch SET work_mem = '64MB';
ALTER ROLE sqlgate_scratch SET temp_file_limit = '1GB';
ALTER ROLE sqlgate_scratch SET idle_in_transaction_session_timeout = '10min';
