-- why: files without public links (issue 32 §3). An integrator uploads a file (POST /api/v1/media) and
-- sends it by `media_id`: its bytes are kept here, shared by every instance, with the type checked by its
-- first bytes. `last_used_at` moves with each hand-off that sends it; the retention worker deletes a file
-- RETENTION_MEDIA_DAYS after its upload or last use, unless a message still queued names it.
-- media_provider_ids keeps a provider's own id of a file it took by upload (Meta's Graph media id, per
-- phone number id: `scope`), until `expires_at` (Meta keeps an uploaded medium 30 days): uploaded once,
-- again after it expired.

create table media (
  id text primary key,
  account_id bigint not null references accounts (id),
  -- image, video, audio, document or sticker: which sends may use it.
  kind text not null check (kind in ('image', 'video', 'audio', 'document', 'sticker')),
  mime_type text not null,
  size bigint not null,
  sha256 text not null,
  filename text,
  bytes bytea not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz not null default now()
);
create index media_account on media (account_id, created_at desc);
-- Retention's scan: the files least recently used first.
create index media_last_used on media (last_used_at);

create table media_provider_ids (
  media_id text not null references media (id) on delete cascade,
  scope text not null,
  provider_media_id text not null,
  expires_at timestamptz not null,
  primary key (media_id, scope)
);
