-- why: a campaign's message charged before Meta paused its WhatsApp template (issue 30) is not handed
-- over to be refused (132015) and lost for the campaign: its hand-off sets it aside, still queued and
-- charged, until the template is approved again (the campaign scheduler then gives it back to recovery),
-- its campaign is cancelled or its validity runs out (then refunded). set_aside_at marks it meanwhile.
alter table messages add column set_aside_at timestamptz;
create index messages_set_aside on messages (set_aside_at) where set_aside_at is not null and status = 'queued';
