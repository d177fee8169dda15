-- why: the rest of the v1 resources: contacts (one per normalised phone per account), templates and
-- segments that campaigns refer to (only within their own account), campaigns, their messages, and
-- one webhook registration per API key.

-- Search (GET /contacts?search=) is a substring match on name, phone and e-mail. pg_trgm would index
-- that, but the embedded database (PGlite) ships it only as a separately loaded extension, so the
-- search walks one account's rows instead. search_text keeps that walk to one lowercase column,
-- computed once at insert: 100,000 contacts of an account scan in tens of milliseconds.
-- A newline separates the fields so that a match never spans two of them.
create table contacts (
  id bigint generated always as identity primary key,
  account_id bigint not null references accounts (id),
  name text not null,
  phone text not null,
  email text,
  city text,
  tags text[] not null default '{}',
  search_text text generated always as (lower(name || chr(10) || phone || chr(10) || coalesce(email, ''))) stored,
  created_at timestamptz not null default now(),
  constraint contacts_phone_unique unique (account_id, phone),
  constraint contacts_name_not_empty check (name <> '')
);
create index contacts_account_newest on contacts (account_id, created_at desc, id desc);
-- Segments select contacts by tag.
create index contacts_tags on contacts using gin (tags);

-- unique (account_id, id) lets campaigns reference a template or segment of their own account only.
create table templates (
  id bigint generated always as identity primary key,
  account_id bigint not null references accounts (id),
  name text not null,
  body text not null,
  created_at timestamptz not null default now(),
  constraint templates_account_id_unique unique (account_id, id)
);

create table segments (
  id bigint generated always as identity primary key,
  account_id bigint not null references accounts (id),
  name text not null,
  tag text not null,
  created_at timestamptz not null default now(),
  constraint segments_account_id_unique unique (account_id, id)
);

-- The API creates drafts only; the other states belong to the dashboard's campaign run.
create table campaigns (
  id bigint generated always as identity primary key,
  account_id bigint not null references accounts (id),
  api_key_id bigint references api_keys (id),
  name text not null,
  template_id bigint not null,
  segment_id bigint not null,
  status text not null default 'draft',
  schedule_at timestamptz,
  pause_reason text,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  constraint campaigns_status_known check (status in ('draft', 'scheduled', 'sending', 'paused', 'sent', 'cancelled')),
  constraint campaigns_account_id_unique unique (account_id, id),
  constraint campaigns_template_same_account foreign key (account_id, template_id) references templates (account_id, id),
  constraint campaigns_segment_same_account foreign key (account_id, segment_id) references segments (account_id, id)
);
create index campaigns_account_newest on campaigns (account_id, created_at desc, id desc);
create index campaigns_scheduled_due on campaigns (schedule_at) where status = 'scheduled';

-- A campaign's messages belong to the campaign's account (the composite key checks it). Stats count
-- them by status; most messages have no campaign, hence the partial index.
alter table messages
  add column campaign_id bigint,
  add constraint messages_campaign_same_account foreign key (account_id, campaign_id) references campaigns (account_id, id);
create index messages_campaign_status on messages (campaign_id, status) where campaign_id is not null;

-- One callback URL per API key. The secret survives a URL change and dies with the registration.
create table webhook_endpoints (
  api_key_id bigint primary key references api_keys (id) on delete cascade,
  url text not null,
  signing_secret text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint webhook_endpoints_url_https check (url like 'https://%'),
  constraint webhook_endpoints_url_length check (char_length(url) <= 2048)
);
