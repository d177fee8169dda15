-- why: the simulator's reports of one message are applied in order even when two instances claim them:
-- a report is claimed only when no earlier report of its message is left (one claimed by another
-- instance stays until that instance commits). The claim looks its message's reports up by SID.
create index simulator_reports_message on simulator_reports (message_sid);
