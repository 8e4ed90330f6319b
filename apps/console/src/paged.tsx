import { useState } from 'preact/hooks';
import type { VNode } from 'preact';
import { Problem, Table, useLoad } from './components';

/** The query of a page of `limit` items after `cursor`, where the previous page ended (docs/api.md "Listing filters"). */
export const pageQuery = (cursor: string | undefined, limit = 50) => ({ limit, ...(cursor ? { cursor } : {}) });

/**
 * A list read a page at a time: its items so far (each page's array under `list`), and `more`
 * while a next page exists.
 */
export function usePaged<T>(
  read: (cursor: string | undefined) => Promise<{ data: unknown; next: string | undefined }>,
  list: string,
  keys: unknown[],
) {
  const itemsOf = (page: unknown) => (page as Record<string, T[]>)[list]!;
  const [extra, setExtra] = useState<{ items: T[]; next: string | undefined; error?: unknown } | null>(null);
  const first = useLoad(async () => {
    setExtra(null);
    return read(undefined);
  }, keys);
  const items = [...(first.value ? itemsOf(first.value.data) : []), ...(extra?.items ?? [])];
  const next = extra ? extra.next : first.value?.next;
  return {
    items,
    next,
    error: first.error ?? extra?.error,
    more: async () => {
      try {
        const page = await read(next);
        setExtra({ items: [...(extra?.items ?? []), ...itemsOf(page.data)], next: page.next });
      } catch (error) {
        setExtra({ items: extra?.items ?? [], next, error });
      }
    },
  };
}

/** A paged list as a table: a refusal if reading it failed, its rows so far, and a button for more. */
export function PagedTable<T>(props: {
  list: ReturnType<typeof usePaged<T>>;
  caption: string;
  columns: string[];
  more: string;
  row: (item: T) => VNode;
}) {
  const { list } = props;
  return (
    <>
      <Problem error={list.error} />
      <Table caption={props.caption} columns={props.columns}>
        {list.items.map(props.row)}
      </Table>
      {list.next && (
        <button type="button" class="secondary" onClick={() => void list.more()}>
          {props.more}
        </button>
      )}
    </>
  );
}
