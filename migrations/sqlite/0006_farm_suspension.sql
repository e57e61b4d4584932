-- What a suspension means, decided (issue 13): this replaces the comment on `farms.suspended` in 0001, which
-- said members "cannot sign in to act". A suspended farm's members may sign in, and every page they see says
-- the farm is suspended and why; nothing that changes the farm or mints access succeeds: no consent, no code,
-- no token, no MCP call, no farm administration (docs/security.md, docs/operations.md). Each person may still
-- change their own password and disconnect their own apps. (SQLite twin of postgres/0006.)

-- Why the farm is suspended, in the operator's words (`coop admin farm suspend SLUG --reason TEXT`), shown
-- to its members; null when the operator gave no reason or the farm is not suspended.
alter table farms add column suspended_reason text;
