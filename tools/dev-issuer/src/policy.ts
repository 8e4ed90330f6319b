/**
 * When the development token issuer may run: `npm start` runs it so that Bearer
 * can be tried on a laptop, and it must never be part of a production system, where tokens
 * come from the operator's identity provider.
 */
export interface IssuerEnvironment {
  NODE_ENV?: string | undefined;
  JWT_JWKS_URL?: string | undefined;
  JWT_PUBLIC_KEY?: string | undefined;
  JWT_ISSUER?: string | undefined;
  AUTH_ISSUERS?: string | undefined;
  AUTH_ISSUERS_FILE?: string | undefined;
}

/**
 * The staff roles of the development provider, as the gateway's `AUTH_ISSUERS` entry maps them:
 * it is the platform's own provider, so its staff may serve any grantor.
 */
export const DEV_STAFF = {
  read: 'rights-support',
  write: 'rights-support-write',
  admin: 'rights-admin',
  grantor: 'grantor',
  grantors: ['*'],
} as const;

/**
 * Why the issuer may not run in this environment, or null when it may. NODE_ENV must say
 * development or test: unset means production, as it does for every service (libs/config).
 */
export function issuerRefusal(env: IssuerEnvironment): string | null {
  if (env.NODE_ENV !== 'development' && env.NODE_ENV !== 'test')
    return `the development token issuer never runs when NODE_ENV is ${env.NODE_ENV ?? 'unset (production)'}`;
  return null;
}

/** Whether `npm start` runs the issuer: allowed here, and the gateway trusts no other issuer. */
export function devIssuerWanted(env: IssuerEnvironment): boolean {
  const trustsAnother =
    env.JWT_JWKS_URL || env.JWT_PUBLIC_KEY || env.JWT_ISSUER || env.AUTH_ISSUERS || env.AUTH_ISSUERS_FILE;
  return issuerRefusal(env) === null && !trustsAnother;
}
