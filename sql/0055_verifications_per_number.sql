-- why: a number cannot be made to flood with codes (issue 30 §4). Beside each account's own limit per
-- number, all accounts together may start only VERIFY_PER_NUMBER_TOTAL verifications for one number per
-- window: counted by phone across accounts, which the per-account index cannot serve.
create index verifications_phone on verifications (phone, created_at);
