#!/bin/sh
# The Python clients' "browser": Python's webbrowser module runs `$BROWSER URL`
# and waits for it to exit, so the sign-in and consent (browser.py) run in
# the background and this returns at once, as a real browser launcher does.
# browser.py then delivers the redirect to the client's loopback callback.
"${COOP_TEST_BROWSER_PYTHON:-python3}" "$(dirname "$0")/browser.py" "$@" </dev/null >/dev/null 2>&1 &
exit 0
