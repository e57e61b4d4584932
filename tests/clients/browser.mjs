// The person at the browser, for the Node clients: opens an authorization
// URL, signs in through Coop's form (with its CSRF token), ticks exactly the
// wanted scopes on the consent screen, approves by form post and returns the
// redirect back to the client (its `code`, `state`, `iss`).
//
// As a module: `await signInAndConsent({ authorizationUrl, email, password, scopes })`.
//
// As a program it is the Inspector's "browser" (xdg-open runs `$BROWSER URL`):
//   COOP_TEST_EMAIL, COOP_TEST_PASSWORD, COOP_TEST_SCOPES say who signs in
//   and what they tick; the final redirect is then followed to the client's
//   loopback callback, as a browser would; COOP_TEST_BROWSER_LOG names a file
//   that gets one JSON line per opened URL (what was asked, what came back).

import { appendFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The `<form>`s of a page: action and inputs (name, value, type). */
export function formsOf(html) {
  const forms = [];
  const formRe = /<form\b([^>]*)>([\s\S]*?)<\/form>/gi;
  for (const [, formAttrs, body] of html.matchAll(formRe)) {
    const inputs = [];
    for (const [, attrs] of body.matchAll(/<(?:input|button)\b([^>]*)>/gi)) {
      inputs.push({
        name: attr(attrs, "name"),
        value: decode(attr(attrs, "value") ?? ""),
        type: attr(attrs, "type") ?? "text",
      });
    }
    forms.push({ action: decode(attr(formAttrs, "action") ?? ""), inputs });
  }
  return forms;
}

function attr(attrs, name) {
  const m = attrs.match(new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`, "i"));
  return m ? m[1] : undefined;
}

function decode(s) {
  return s
    .replace(/&#x([0-9a-f]+);/gi, (_, hex) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#([0-9]+);/g, (_, dec) => String.fromCodePoint(parseInt(dec, 10)))
    .replaceAll("&quot;", '"')
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}

function field(form, name) {
  const input = form.inputs.find((i) => i.name === name);
  if (!input) throw new Error(`browser: the form ${form.action} has no ${name} field`);
  return input.value;
}

/** A cookie-keeping fetch that never follows redirects. */
function session() {
  const jar = new Map();
  return async (url, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    if (jar.size > 0) {
      headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    }
    const response = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(";");
      const eq = pair.indexOf("=");
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    return response;
  };
}

/**
 * Signs in and approves. Returns { request, redirect, params, ticked }:
 * the authorization request's parameters, the redirect URL back to the
 * client and its query parameters.
 */
export async function signInAndConsent({ authorizationUrl, email, password, scopes }) {
  const url = new URL(authorizationUrl);
  const request = Object.fromEntries(url.searchParams);
  const http = session();
  let response = await http(url);
  let location = response.headers.get("location") ?? "";
  if (response.status === 303 && new URL(location, url).pathname === "/login") {
    const loginUrl = new URL(location, url);
    const page = await (await http(loginUrl)).text();
    const form = formsOf(page).find((f) => f.action === "/login");
    if (!form) throw new Error("sign-in: the page has no sign-in form");
    const signedIn = await http(new URL("/login", url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        csrf: field(form, "csrf"),
        return_to: field(form, "return_to"),
        email,
        password,
      }),
    });
    if (signedIn.status !== 303) {
      const page = await signedIn.text();
      // The form's notice, or an error page's message.
      const notice =
        page.match(/<p class="notice[^"]*"[^>]*>([\s\S]*?)<\/p>/)?.[1] ??
        page.match(/<\/h1>\s*<p>([\s\S]*?)<\/p>/)?.[1] ??
        "";
      throw new Error(`sign-in: expected 303, got ${signedIn.status} ${notice.trim()}`);
    }
    response = await http(new URL(signedIn.headers.get("location"), url));
  }
  if (response.status !== 200) {
    const page = await response.text();
    const notice = page.match(/<p class="notice[^"]*"[^>]*>([\s\S]*?)<\/p>/)?.[1] ?? page.slice(0, 300);
    throw new Error(
      `consent: expected the consent page, got ${response.status} ${response.headers.get("location") ?? ""} ${notice.trim()}`,
    );
  }
  const consent = formsOf(await response.text()).find((f) => f.action === "/authorize/consent");
  if (!consent) throw new Error("consent: the page has no consent form");
  const offered = consent.inputs.filter((i) => i.name === "scope").map((i) => i.value);
  const missing = scopes.filter((s) => !offered.includes(s));
  if (missing.length > 0) throw new Error(`consent: ${missing} not offered (offered ${offered})`);
  const body = new URLSearchParams([
    ["csrf", field(consent, "csrf")],
    ["request", field(consent, "request")],
    ["decision", "approve"],
    ...scopes.map((s) => ["scope", s]),
  ]);
  const answered = await http(new URL("/authorize/consent", url), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body,
  });
  location = answered.headers.get("location") ?? "";
  if (answered.status !== 303 || !location.startsWith(request.redirect_uri ?? "\u0000")) {
    throw new Error(`consent: expected a 303 to ${request.redirect_uri}, got ${answered.status} ${location}`);
  }
  const redirect = new URL(location);
  return { request, redirect, params: Object.fromEntries(redirect.searchParams), offered, ticked: scopes };
}

// `$BROWSER URL`: sign in, consent, then deliver the redirect to the client.
async function main() {
  const authorizationUrl = process.argv[2];
  const log = process.env.COOP_TEST_BROWSER_LOG;
  const note = (entry) => {
    if (log) appendFileSync(log, `${JSON.stringify(entry)}\n`);
  };
  try {
    const done = await signInAndConsent({
      authorizationUrl,
      email: process.env.COOP_TEST_EMAIL,
      password: process.env.COOP_TEST_PASSWORD,
      scopes: (process.env.COOP_TEST_SCOPES ?? "farm:read").split(/\s+/).filter(Boolean),
    });
    const delivered = await fetch(done.redirect, { redirect: "manual" });
    note({
      ok: delivered.ok,
      request: done.request,
      params: done.params,
      offered: done.offered,
      ticked: done.ticked,
      callbackStatus: delivered.status,
    });
    process.exit(delivered.ok ? 0 : 1);
  } catch (error) {
    note({ ok: false, url: authorizationUrl, error: String(error?.message ?? error) });
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main();
}
