-- why: templates as WhatsApp has them (issue 30). A WhatsApp template belongs to one sender (its
-- WhatsApp Business Account on Meta, its Twilio account's Content API; sender_id null: the
-- deployment's default sender) and carries WhatsApp's own parts: a name, a language, a category and
-- the Cloud API's `components` as Meta takes and returns them. Its status, quality and category change
-- by Meta's or Twilio's word (sync, webhooks) or an operator's submission, and each change is kept.
-- Its id comes from the account templates' sequence, so one `template_id` on a send names either kind
-- without ambiguity (the old `{{name}}` text templates keep working where they are used).

create table wa_templates (
  id bigint primary key default nextval('templates_id_seq'),
  sender_id bigint references senders (id),
  provider text not null,
  name text not null,
  language text not null,
  category text not null,
  parameter_format text not null default 'positional',
  components jsonb not null,
  status text not null default 'draft',
  -- Meta's reason for a rejection or a pause, as given (null when none).
  reason text,
  quality text not null default 'unknown',
  -- The provider's own id: Meta's template id, Twilio's Content SID (HX…); null until submitted or synced.
  provider_ref text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  constraint wa_templates_category_known check (category in ('marketing', 'utility', 'authentication')),
  constraint wa_templates_format_known check (parameter_format in ('positional', 'named')),
  constraint wa_templates_status_known check (status in (
    'draft', 'pending', 'approved', 'rejected', 'paused', 'disabled',
    'in_appeal', 'pending_deletion', 'deleted', 'limit_exceeded', 'archived', 'locked')),
  constraint wa_templates_quality_known check (quality in ('green', 'yellow', 'red', 'unknown'))
);
-- One template per name and language per sender (the deployment's default sender counted as 0).
create unique index wa_templates_sender_name_language on wa_templates (coalesce(sender_id, 0), name, language);

-- Each change of a template's status, category or quality (and its creation), with who said so.
create table wa_template_changes (
  id bigint generated always as identity primary key,
  template_id bigint not null references wa_templates (id) on delete cascade,
  field text not null,
  old_value text,
  new_value text,
  reason text,
  source text not null,
  happened_at timestamptz not null,
  constraint wa_template_changes_field_known check (field in ('created', 'status', 'category', 'quality', 'flagged', 'components')),
  constraint wa_template_changes_source_known check (source in ('operator', 'sync', 'meta', 'twilio', 'simulator'))
);
create index wa_template_changes_template on wa_template_changes (template_id, id);
