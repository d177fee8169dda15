-- why: a campaign may send a WhatsApp template (issue 30). Its `wa_template_id` names it (the account
-- templates' foreign key stays for `template_id`, now null for such a campaign: exactly one of the two is
-- set), `template_parameters` maps each of the template's parameters to where its value comes from (a
-- contact's field, one of its attributes, or a constant), and `missing_values` counts the recipients
-- skipped, uncharged, because a value was missing or one WhatsApp would refuse.

alter table campaigns alter column template_id drop not null;
alter table campaigns add column wa_template_id bigint references wa_templates (id);
alter table campaigns add column template_parameters jsonb;
alter table campaigns add column missing_values integer not null default 0;
alter table campaigns add constraint campaigns_one_template check ((template_id is null) <> (wa_template_id is null));
alter table campaigns add constraint campaigns_parameters_with_wa check ((wa_template_id is null) = (template_parameters is null));
