import { SkuName, SkuUpsertBody } from '@rs/contracts';
import { ifMatchGeneration, pageParams, parseBody, parseParam, route, setETag, setNextLink } from '@rs/http';
import { Router, type Request } from 'express';
import type { CatalogUseCases } from '../app/catalog';
import { representation } from '../domain/sku';

/** The admin catalog API of DESIGN.md 6: HTTP in and out; the rules are the use cases'. */
export function catalogRoutes(catalog: CatalogUseCases, publicBaseUrl: string): Router {
  const router = Router();
  const skuParam = (req: Request) => parseParam(SkuName, 'sku', req.params.sku);

  route(router, '/catalog/skus', {
    get: async (req, res) => {
      const page = pageParams(req);
      const after = page.after === undefined ? undefined : parseParam(SkuName, 'cursor', page.after);
      const entries = await catalog.list(res.locals.principal, page.limit, after);
      setNextLink(req, res, publicBaseUrl, page, entries.at(-1)?.sku, entries.length);
      res.json({ skus: entries.map(representation) });
    },
  });

  route(router, '/catalog/skus/:sku', {
    get: async (req, res) => {
      const entry = await catalog.get(res.locals.principal, skuParam(req));
      setETag(res, entry.generation);
      res.json(representation(entry));
    },
    put: async (req, res) => {
      const sku = skuParam(req);
      const body = parseBody(SkuUpsertBody, req.body);
      const { created, entry } = await catalog.put(res.locals.principal, sku, body, ifMatchGeneration(req));
      setETag(res, entry.generation);
      if (created) res.status(201).location(`${publicBaseUrl}/catalog/skus/${sku}`).json(representation(entry));
      else res.status(204).end();
    },
    delete: async (req, res) => {
      await catalog.remove(res.locals.principal, skuParam(req), ifMatchGeneration(req));
      res.status(204).end();
    },
  });
  return router;
}
