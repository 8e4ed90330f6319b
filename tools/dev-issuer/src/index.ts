export { DevTokenIssuer, type IssuedToken } from './issuer';
export { DEV_STAFF, devIssuerWanted, issuerRefusal, type IssuerEnvironment } from './policy';
export { issuerServer } from './server';
export { parseTokenRequest, TokenRequest } from './token-request';
