import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Refused } from './api';

/** What went wrong, said in the API's words, announced to screen readers. */
export function Problem({ error }: { error: unknown }) {
  if (!error) return null;
  const text =
    error instanceof Refused ? `${error.status}: ${error.detail}` : String((error as Error).message ?? error);
  return (
    <p class="problem" role="alert">
      {text}
    </p>
  );
}

/** Loads `load` whenever `keys` change: its result, its error, and a way to load it again. */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[]) {
  const [state, setState] = useState<{ value?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (value) => current && setState({ value, loading: false }),
      (error: unknown) => current && setState({ error, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...keys, round]);
  return { ...state, reload: () => setRound((n) => n + 1) };
}

export interface ActionField {
  name: string;
  label: string;
  /** A number (an amount), or text. */
  number?: boolean;
  required?: boolean;
  initial?: string;
  options?: string[];
}

/**
 * Something a person sets going (a search, a reading, a change): whether it is under way, and
 * why it failed, shown until they try again.
 */
export function useAttempt() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const attempt = async (work: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, attempt };
}

/**
 * A change asked for in a dialog: its fields and, always, the reason the audit log records
 * (docs/audit.md). The API's refusal is shown in the dialog, which stays open.
 */
export function ActionDialog(props: {
  title: string;
  fields?: ActionField[];
  submitLabel: string;
  onSubmit: (values: Record<string, string>, reason: string) => Promise<void>;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const { busy, error, attempt } = useAttempt();
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const values = Object.fromEntries([...form].map(([key, value]) => [key, String(value)]));
    const { reason = '', ...rest } = values;
    await attempt(async () => {
      await props.onSubmit(rest, reason);
      props.onClose();
    });
  };
  return (
    <dialog ref={dialog} aria-labelledby="action-title" onClose={props.onClose}>
      <form onSubmit={submit}>
        <h2 id="action-title">{props.title}</h2>
        {(props.fields ?? []).map((field) => (
          <Field key={field.name} field={field} />
        ))}
        <label>
          Reason (recorded in the audit log)
          <textarea name="reason" required maxLength={500} rows={2} />
        </label>
        <Problem error={error} />
        <div class="buttons">
          <button type="submit" disabled={busy}>
            {props.submitLabel}
          </button>
          <button type="button" class="secondary" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
      </form>
    </dialog>
  );
}

function Field({ field }: { field: ActionField }) {
  if (field.options)
    return (
      <label>
        {field.label}
        <select name={field.name} required={field.required}>
          {field.options.map((option) => (
            <option key={option} value={option} selected={option === field.initial}>
              {option}
            </option>
          ))}
        </select>
      </label>
    );
  return (
    <label>
      {field.label}
      {field.number ? (
        <input name={field.name} type="number" step={1} required={field.required} value={field.initial} />
      ) : (
        <input name={field.name} type="text" required={field.required} value={field.initial} />
      )}
    </label>
  );
}

/** A section of a page with its heading, for landmarks and for the eye. */
export function Section(props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `section-${props.title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section aria-labelledby={id}>
      <div class="section-head">
        <h2 id={id}>{props.title}</h2>
        {props.actions}
      </div>
      {props.children}
    </section>
  );
}

/** A table of rows, its columns named, its caption for screen readers. */
export function Table(props: { caption: string; columns: string[]; children: ComponentChildren }) {
  return (
    <table>
      <caption class="visually-hidden">{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{props.children}</tbody>
    </table>
  );
}
