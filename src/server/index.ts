/** `belay/server`: the HTTP fronts as one fetch-style handler, and a Node listener for it. */
export { createBelayApp, type BelayAppOptions } from './app.js';
export { listen, type RunningServer } from './http-server.js';
export { Authenticator, parseApiKeySpec, type ApiKeyEntry, type AuthOptions, type JwtAuthOptions } from '../protocols/http/auth.js';
export { problemFor, problemResponse, HTTP_STATUS } from '../protocols/http/problem.js';
export { type A2aOptions } from '../protocols/a2a/a2a-routes.js';
export { A2A_ERROR_TABLE } from '../protocols/a2a/error-map.js';
