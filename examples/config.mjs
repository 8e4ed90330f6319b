// What every example reads from its environment: where the platform is and who calls it.
// Against `npm start`: PLATFORM_URL=http://localhost:8080, and the credentials of a client you
// registered (PUT /admin/clients/{clientId}) or the admin client it prints.
export const baseUrl = (process.env.PLATFORM_URL ?? 'http://localhost:8080').replace(/\/+$/, '');

/**
 * The Basic credentials in CLIENT_ID / CLIENT_SECRET (or the admin's in ADMIN_ID /
 * ADMIN_SECRET); without them the example stops with one line saying what to set (exit code 2).
 */
export function credentials(prefix = 'CLIENT') {
  const clientId = process.env[`${prefix}_ID`];
  const secret = process.env[`${prefix}_SECRET`];
  if (!clientId || !secret) {
    const whose = prefix === 'ADMIN' ? 'an admin client (npm start prints one)' : 'the API client to call as';
    console.error(`set ${prefix}_ID and ${prefix}_SECRET: the Basic credentials of ${whose}`);
    process.exit(2);
  }
  return { basic: { clientId, secret } };
}

/** One line of JSON on stdout: what the example did, for a person or a test to read. */
export const report = (what) => console.log(JSON.stringify(what));
