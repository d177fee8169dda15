-- why: the dashboard answers every form with a redirect, so a reload never repeats an action. Creating
-- and money-moving forms carry a single-use token: its use is recorded in the same transaction as what
-- the form does, so a resubmitted form is refused instead of done twice. What a form's answer must show
-- once on the next page (a notice, a new API key, a one-time link, an import report) waits here sealed
-- with a key derived from the session's cookie, which the database never holds: only that browser can
-- open it, and it is deleted as it is shown.
create table form_tokens (
  nonce text primary key,
  used_at timestamptz not null default now()
);
create index form_tokens_used on form_tokens (used_at);

create table dashboard_flashes (
  id bigint generated always as identity primary key,
  session_hash text not null references sessions (token_hash) on delete cascade,
  path text not null,
  -- AES-256-GCM: the 12-byte IV, then the ciphertext and its tag; the path is the additional data.
  sealed bytea not null,
  created_at timestamptz not null default now()
);
create index dashboard_flashes_session on dashboard_flashes (session_hash, path);
create index dashboard_flashes_created on dashboard_flashes (created_at);
