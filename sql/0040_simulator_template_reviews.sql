-- why: the simulator plays Meta's review of a submitted WhatsApp template (issue 30 §5): a template
-- submitted to a simulator sender (or to the deployment's default sender with PROVIDER=simulator) is
-- stored `pending` with its review written beside it in the same transaction: its outcome (approved,
-- or rejected with a reason) and when it falls due (SIM_TEMPLATE_APPROVAL_MS after the submission, on
-- the service's clock). The simulator-reports worker claims due reviews (delete ... skip locked, so one
-- instance applies each, once) and applies them with the template's change and its event in the same
-- transaction. A review survives restarts; it goes with its template.

create table simulator_template_reviews (
  template_id bigint primary key references wa_templates (id) on delete cascade,
  status text not null,
  reason text,
  due_at timestamptz not null,
  constraint simulator_template_reviews_status_known check (status in ('approved', 'rejected'))
);
create index simulator_template_reviews_due on simulator_template_reviews (due_at, template_id);
