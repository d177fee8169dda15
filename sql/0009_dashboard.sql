-- why: the web dashboard: its users (operators see every account, members one), their sessions and
-- one-time links (stored as hashes only), sign-in throttling, who made each top-up, and the audit log.
create table users (
  id bigint generated always as identity primary key,
  email text not null,
  role text not null,
  account_id bigint references accounts (id),
  password_hash text,
  active boolean not null default true,
  created_at timestamptz not null default now(),
  constraint users_role_known check (role in ('operator', 'member')),
  constraint users_member_has_one_account check ((role = 'member') = (account_id is not null))
);
create unique index users_email on users (lower(email));
create index users_account on users (account_id) where account_id is not null;

create table sessions (
  token_hash text primary key,
  user_id bigint not null references users (id),
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now()
);
create index sessions_user on sessions (user_id);

create table user_links (
  token_hash text primary key,
  user_id bigint not null references users (id),
  kind text not null,
  created_by bigint references users (id),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  constraint user_links_kind_known check (kind in ('invite', 'reset'))
);
create index user_links_user on user_links (user_id);

-- Failed sign-ins per subject ('email:<address>' or 'address:<ip>') within the current window.
create table sign_in_failures (
  subject text primary key,
  failures integer not null,
  window_start timestamptz not null default now(),
  locked_until timestamptz
);

alter table ledger add column created_by bigint references users (id);

create table audit_log (
  id bigint generated always as identity primary key,
  at timestamptz not null default now(),
  user_id bigint references users (id),
  actor text not null,
  address text,
  account_id bigint references accounts (id),
  action text not null,
  detail jsonb not null default '{}'
);
create index audit_log_account_newest on audit_log (account_id, id desc);
