// A self-signed certificate for this machine's loopback names (`localhost` and 127.0.0.1), made for
// one run: the production rehearsal's site and database, and the tests that serve TLS with it.
import { generate } from "selfsigned";

/**
 * An EC certificate and key (PEM) naming `localhost` and 127.0.0.1; the certificate is its own
 * authority (trust it as the CA).
 * @returns {Promise<{ cert: string, key: string }>}
 */
export async function localCertificate() {
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keyType: "ec",
    extensions: [
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: "127.0.0.1" },
        ],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}
