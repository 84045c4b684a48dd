/**
 * @module server/dashboard
 * The web dashboard's static files (the package's top-level `web/` folder: plain HTML, CSS and ES modules, no
 * build step). They are public; every piece of data the page shows comes from the authenticated REST API, with
 * the key the user typed (kept in the browser's localStorage). `GET /` redirects to `/dashboard/`.
 */
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Hono } from 'hono';

/** From dist/server/ and from src/server/ alike, the package root is two folders up. */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

const HEADERS = {
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // Everything the page loads or calls is this origin; no inline script, no frames.
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
};

export function dashboardRoutes(dir: string = DEFAULT_DASHBOARD_DIR): Hono {
  const app = new Hono();
  const root = normalize(dir.endsWith(sep) ? dir : dir + sep);
  const serve = async (file: string): Promise<Response | null> => {
    const type = TYPES[extname(file)];
    const full = normalize(join(root, file));
    if (!type || !full.startsWith(root) || file.split('/').some((part) => part.startsWith('.'))) return null;
    try {
      return new Response(await readFile(full), { headers: { 'content-type': type, ...HEADERS } });
    } catch {
      return null;
    }
  };
  app.get('/', (c) => c.redirect('/dashboard/', 302));
  app.get('/dashboard', (c) => c.redirect('/dashboard/', 301));
  app.get('/dashboard/*', async (c, next) => {
    let rest: string;
    try {
      rest = decodeURIComponent(new URL(c.req.url).pathname.slice('/dashboard/'.length));
    } catch {
      return next();
    }
    const res = await serve(rest === '' ? 'index.html' : rest);
    if (res) return res;
    await next();
  });
  return app;
}
