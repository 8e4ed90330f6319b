import { useState } from 'preact/hooks';
import { useLoad } from './components';

/** A newest-first list read a page at a time: its items so far, and `more` while a next page exists. */
export function usePaged<T>(
  read: (cursor: string | undefined) => Promise<{ data: unknown; next: string | undefined }>,
  itemsOf: (page: unknown) => T[],
  keys: unknown[],
) {
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
