-- why: a contact's own values (issue 30): an ERP keeps per customer what its templates need (an order id,
-- an invoice number, a due date), so a campaign can fill a WhatsApp template's parameters from them.
-- `attributes` is a flat object of text to text; the service checks its keys (letters, digits and
-- underscores, at most 64 characters), its size (at most 50) and its values (at most 1,024 characters),
-- the table only that it is an object. Existing contacts get none.

alter table contacts add column attributes jsonb not null default '{}';
alter table contacts add constraint contacts_attributes_object check (jsonb_typeof(attributes) = 'object');
