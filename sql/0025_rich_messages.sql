-- why: rich messages (issue 19, part 6). A message records what it carries beyond text (media by
-- type, a location, reply buttons, a list, a template's header media) in `content`, so a recovered
-- hand-off sends the same JSON; `body` keeps a text rendering for lists. Twilio sends buttons and
-- lists as Content templates created on the fly: each one created is kept by its account and the
-- digest of its definition, so the same buttons are created once, whatever the process or restart.
alter table messages add column content jsonb;

create table provider_contents (
  provider text not null,
  account text not null,
  digest text not null,
  ref text not null,
  created_at timestamptz not null default now(),
  primary key (provider, account, digest)
);
