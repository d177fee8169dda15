-- why: conversations with manners (issue 32 §2). A customer's message can be marked read at the provider
-- (read_marked_at: when the service did it, never charged); a message can quote the one it answers
-- (messages.reply_to and inbound_messages.reply_to: the provider's id of the quoted message, as the
-- provider names it; our own ids are looked up when shown); an account chooses whether its inbox marks a
-- conversation read when an agent opens it (off by default: the customer sees read receipts).
alter table inbound_messages add column reply_to text;
alter table inbound_messages add column read_marked_at timestamptz;
alter table messages add column reply_to text;
alter table accounts add column inbox_marks_read boolean not null default false;
-- Reactions are found by the message they react to (its provider id in content.message_id).
create index inbound_messages_reaction_target on inbound_messages ((content->>'message_id')) where type = 'reaction';
create index messages_reaction_target on messages ((content->>'message_id')) where content->>'type' = 'reaction';
