-- why: a campaign may cap the price of its messages (issue 31, `max_price`): a batch whose price is above it
-- is not charged, and the campaign pauses with PRICE_ABOVE_MAX (its template recategorised by Meta, a price
-- raised). Null: no cap.

alter table campaigns add column max_price bigint;
alter table campaigns add constraint campaigns_max_price_not_negative check (max_price >= 0);
