import { SkuName, SkuUpsertBody } from '@rs/contracts';
import * as http from '@rs/http';
import type { Request, Router } from 'express';
import type { CatalogUseCases } from '../app/catalog';
import { representation } from '../domain/sku';

/** The admin catalog API of docs/operations.md: HTTP in and out; the rules are the use cases'. */
export function catalogRoutes(catalog: CatalogUseCases, publicBaseUrl: string): Router {
  const router = http.exactRouter();
  const skuParam = (req: Request) => http.parseParam(SkuName, 'sku', req.params.sku);

  http.serveRoutes(router, 'catalog', {
    listSkus: async (req, res) => {
      const page = http.pageParams(req);
      const after = page.after === undefined ? undefined : http.parseParam(SkuName, 'cursor', page.after);
      const entries = await catalog.list(res.locals.principal, page.limit, after);
      http.setNextLink(req, res, publicBaseUrl, page, entries.at(-1)?.sku, entries.length);
      http.sendJson(res, { skus: entries.map(representation) });
    },
    getSku: async (req, res) => {
      const entry = await catalog.get(res.locals.principal, skuParam(req));
      http.sendResource(res, entry.generation, representation(entry));
    },
    putSku: async (req, res) => {
      const sku = skuParam(req);
      const body = http.parseBody(SkuUpsertBody, req.body);
      const { created, entry } = await catalog.put(res.locals.principal, sku, body, http.ifMatchGeneration(req));
      http.setETag(res, entry.generation);
      if (created)
        http.sendJson(res.status(201).location(`${publicBaseUrl}/catalog/skus/${sku}`), representation(entry));
      else http.sendDone(res);
    },
    deleteSku: async (req, res) => {
      await catalog.remove(res.locals.principal, skuParam(req), http.ifMatchGeneration(req));
      http.sendDone(res);
    },
  });
  return router;
}
