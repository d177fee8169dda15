-- why: media of inbound messages kept (issue 19, part 1): the provider's media link expires (Meta's
-- URL in 5 minutes, its media id in 7 days; Twilio's until the message is deleted), so each medium is
-- fetched from the provider once, by one worker of any instance, checked (size cap, allowed type,
-- magic bytes) and its bytes kept here, shared by every instance. One row per medium of a message
-- (`position`: Twilio sends up to 10, MediaUrl0..9; Meta one). `status` pending → kept | failed;
-- a pending row is due at `run_at` (its claim pushes `run_at` past the fetch's time, a retry backs it
-- off), `attempts` counts claims, `error` says why it failed (or why the last try did).

create table inbound_media (
  id bigint generated always as identity primary key,
  inbound_message_id bigint not null references inbound_messages (id) on delete cascade,
  position int not null check (position between 0 and 9),
  -- What the provider calls it: Meta's media id, Twilio's MediaUrl (never shown once kept).
  provider_media_id text,
  provider_url text,
  -- The kind of medium (image, document, audio, video, sticker): which types are allowed.
  kind text not null,
  -- The provider's word for its type (the webhook's), then the type checked and kept.
  declared_type text,
  mime_type text,
  filename text,
  size bigint,
  sha256 text,
  bytes bytea,
  status text not null default 'pending' check (status in ('pending', 'kept', 'failed')),
  error text,
  attempts int not null default 0,
  run_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  constraint inbound_media_position_unique unique (inbound_message_id, position)
);
-- The worker's claim: due pending rows, oldest due first.
create index inbound_media_due on inbound_media (run_at, id) where status = 'pending';
