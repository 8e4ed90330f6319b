import type { Schemas } from '@rs/client';
import type { Api } from '../api';
import { PagedTable, pageQuery, usePaged } from '../paged';

type Sku = Schemas['Sku'];

/** The catalog (admins): every SKU, its provider and the grantors that may grant it. */
export function CatalogPage({ api }: { api: Api }) {
  const skus = usePaged<Sku>(
    (cursor) => api.read((client) => client.GET('/catalog/skus', { params: { query: pageQuery(cursor, 100) } })),
    'skus',
    [],
  );
  return (
    <div>
      <h1>Catalog</h1>
      <PagedTable
        list={skus}
        caption="SKUs in name order"
        columns={['SKU', 'Name', 'Provider', 'Grantors', 'Announced on first use']}
        more="More SKUs"
        row={(sku) => (
          <tr key={sku.sku} data-sku={sku.sku}>
            <td class="id">{sku.sku}</td>
            <td>{sku.name ?? '—'}</td>
            <td>{sku.serviceProviderId ?? '—'}</td>
            <td>{sku.grantorIds?.join(', ') ?? 'any'}</td>
            <td>{sku.announceOnUsage ? 'yes' : 'no'}</td>
          </tr>
        )}
      />
    </div>
  );
}
