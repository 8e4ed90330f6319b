import { hrefOf } from '../route';

/** Find a user by their connectId (docs/console.md "Find"). */
export function FindPage() {
  const submit = (event: Event) => {
    event.preventDefault();
    const connectId = String(new FormData(event.currentTarget as HTMLFormElement).get('connectId') ?? '').trim();
    if (connectId) location.hash = hrefOf.user(connectId);
  };
  return (
    <div>
      <h1>Find a user</h1>
      <form class="find" onSubmit={submit} role="search">
        <label>
          User (connectId)
          <input name="connectId" required autoComplete="off" spellcheck={false} />
        </label>
        <button type="submit">Find</button>
      </form>
    </div>
  );
}
