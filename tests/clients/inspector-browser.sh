#!/bin/sh
# The MCP Inspector's "browser": xdg-open runs `$BROWSER URL` on a machine
# with no desktop. Signs in and consents by form post, then follows the
# redirect to the Inspector's loopback callback (see browser.mjs).
exec node "$(dirname "$0")/browser.mjs" "$@"
