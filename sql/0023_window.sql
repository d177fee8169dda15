-- why: the 24-hour window is enforced from the stored inbound messages (issue 19, part 3). The
-- simulator's hand-fed windows (simulator_inbound) go: a number "writes in" by storing a real inbound
-- message now; windows still open are kept as inbound messages to the default number. A campaign that
-- goes free-form skips the recipients whose window is closed and counts them in window_closed.

insert into inbound_messages (provider, provider_message_id, sender_id, account_id, contact_id, phone, name, type, text, content, raw, received_at)
select 'simulator', 'SIMWINDOW' || phone || '-' || extract(epoch from last_inbound_at)::bigint, null, null, null, phone, null, 'text', null,
       '{}'::jsonb, '{}'::jsonb, last_inbound_at
from simulator_inbound where last_inbound_at > now() - interval '24 hours'
on conflict do nothing;

drop table simulator_inbound;

alter table campaigns add column window_closed integer not null default 0;
