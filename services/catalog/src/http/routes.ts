import { SkuName, SkuUpsertBody } from '@rs/contracts';
import {
  basicChallenge,
  ifMatchGeneration,
  notFound,
  pageParams,
  parseBody,
  parseParam,
  preconditionFailed,
  route,
  setETag,
  setNextLink,
  unauthorized,
} from '@rs/http';
import { Router, type Request, type Response } from 'express';
import { representation } from '../domain/sku';
import type { SkuStore } from '../store/sku-store';

/** The admin catalog API of DESIGN.md 6. */
export function catalogRoutes(store: SkuStore, publicBaseUrl: string, realm: string): Router {
  const router = Router();
  /** Reads: an admin client, or another service (SKU checks). Writes: an admin client. */
  const authorize = (res: Response, write: boolean) => {
    const principal = res.locals.principal;
    const allowed = write
      ? principal.admin && principal.scheme !== 'service'
      : principal.admin || principal.scheme === 'service';
    if (!allowed) throw unauthorized('the catalog is administered by admin clients only', basicChallenge(realm));
  };
  const skuParam = (req: Request) => parseParam(SkuName, 'sku', req.params.sku);

  route(router, '/catalog/skus', {
    get: async (req, res) => {
      authorize(res, false);
      const page = pageParams(req);
      const after = page.after === undefined ? undefined : parseParam(SkuName, 'cursor', page.after);
      const entries = await store.list(page.limit, after);
      setNextLink(req, res, publicBaseUrl, page, entries.at(-1)?.sku, entries.length);
      res.json({ skus: entries.map(representation) });
    },
  });

  route(router, '/catalog/skus/:sku', {
    get: async (req, res) => {
      authorize(res, false);
      const entry = await store.find(skuParam(req));
      if (!entry) throw notFound(`no SKU ${req.params.sku}`);
      setETag(res, entry.generation);
      res.json(representation(entry));
    },
    put: async (req, res) => {
      authorize(res, true);
      const sku = skuParam(req);
      const body = parseBody(SkuUpsertBody, req.body);
      const result = await store.upsert(sku, body, ifMatchGeneration(req));
      if (result.outcome === 'precondition-failed')
        throw preconditionFailed(`If-Match does not match the generation of SKU ${sku}`);
      if (result.outcome === 'not-found') throw notFound(`no SKU ${sku}`);
      setETag(res, result.entry.generation);
      if (result.outcome === 'created') {
        res.status(201).location(`${publicBaseUrl}/catalog/skus/${sku}`).json(representation(result.entry));
      } else {
        res.status(204).end();
      }
    },
    delete: async (req, res) => {
      authorize(res, true);
      const sku = skuParam(req);
      const result = await store.remove(sku, ifMatchGeneration(req));
      if (result.outcome === 'not-found') throw notFound(`no SKU ${sku}`);
      if (result.outcome === 'precondition-failed')
        throw preconditionFailed(`If-Match does not match the generation of SKU ${sku}`);
      res.status(204).end();
    },
  });
  return router;
}
