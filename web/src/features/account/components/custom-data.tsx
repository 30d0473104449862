import { customUserData } from "../../../lib/session/jwt.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { DisplayNameForm } from "./display-name-form.tsx";
import { formatEjson } from "./format-ejson.ts";

/** The custom user data the access token carries, and the form that changes its display name. */
export function CustomData() {
  const session = useSession();
  const data = Object.entries(customUserData(session.status === "signed-in" ? session.accessToken : null)).filter(
    ([key]) => key !== "_id",
  );
  return (
    <section aria-labelledby="custom-data-heading" className="card">
      <h2 id="custom-data-heading">Custom data</h2>
      {data.length === 0 ? (
        <p>No custom data yet.</p>
      ) : (
        <dl className="details">
          {data.map(([key, value]) => (
            <div key={key} className="details-row">
              <dt>{key}</dt>
              <dd>{formatEjson(value)}</dd>
            </div>
          ))}
        </dl>
      )}
      <DisplayNameForm />
    </section>
  );
}
