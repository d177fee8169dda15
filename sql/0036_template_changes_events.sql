-- why: template status, category and quality changes announced and ordered (issue 30). A webhook
-- registration may choose the `template.status_changed` event. Meta's template webhooks can arrive
-- late, twice or out of order: each change they make keeps Meta's own time of the notification
-- (`provider_at`, the entry's `time`), so an older notification delivered after a newer one changes
-- nothing, and a repeated FLAGGED notice is recorded once. An impending category change (Meta's notice
-- that the category will change) is kept in the history as a `category_notice` and changes nothing.

alter table webhook_endpoints drop constraint webhook_endpoints_events_known;
alter table webhook_endpoints add constraint webhook_endpoints_events_known check (
  cardinality(events) > 0
  and events <@ array['message.status', 'message.received', 'contact.opted_out', 'contact.opted_in', 'balance.low',
                      'template.status_changed']
);

alter table wa_template_changes add column provider_at timestamptz;
alter table wa_template_changes drop constraint wa_template_changes_field_known;
alter table wa_template_changes add constraint wa_template_changes_field_known
  check (field in ('created', 'status', 'category', 'quality', 'flagged', 'components', 'category_notice'));
create index wa_template_changes_provider_at on wa_template_changes (template_id, field, provider_at) where provider_at is not null;
