-- why: GET /messages with a date filter counted every message of the status through the table
-- (sent_at was in no index), and GET /contacts?search= read every contact of the account.
create index messages_account_status_sent on messages (account_id, status, sent_at) include (created_at, id);

-- Substring search on contacts uses a trigram index where the server has pg_trgm (PostgreSQL's
-- contrib). The embedded PGlite does not load it: there the search scans the account's contacts,
-- which is fine at the sizes one embedded instance serves.
do $$
begin
  create extension if not exists pg_trgm;
  execute 'create index contacts_search_trgm on contacts using gin (search_text gin_trgm_ops)';
exception when others then
  raise notice 'pg_trgm not available: contact search scans';
end $$;
