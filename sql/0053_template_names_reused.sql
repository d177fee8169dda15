-- why: a deleted WhatsApp template's name and language may be used again (issue 30). Meta keeps them
-- from a new template for 30 days after the deletion, then takes them again; a deleted template stays
-- here with its history (its sends and campaigns name it), so one name and language per sender is
-- now unique among the templates that are not deleted only.
drop index wa_templates_sender_name_language;
create unique index wa_templates_sender_name_language on wa_templates (coalesce(sender_id, 0), name, language)
  where status <> 'deleted';
