-- What a suspension means, decided (issue 13): this replaces the comment on `farms.suspended` in 0001, which
-- said members "cannot sign in to act". A suspended farm's members may sign in, and every page they see says
-- the farm is suspended and why; nothing that changes the farm or mints access succeeds: no consent, no code,
-- no token, no MCP call, no farm administration (docs/security.md, docs/operations.md). Each person may still
-- change their own password and disconnect their own apps.

-- Why the farm is suspended, in the operator's words (`coop admin farm suspend SLUG --reason TEXT`), shown
-- to its members; null when the operator gave no reason or the farm is not suspended.
alter table farms add column suspended_reason text;

comment on column farms.suspended is
    'Members may sign in and see that and why the farm is suspended; nothing that changes the farm or mints access succeeds (consent, codes, tokens, MCP calls, farm administration).';
comment on column farms.suspended_reason is
    'Why the farm is suspended, in the operator''s words; shown to its members. Null: no reason given, or not suspended.';
