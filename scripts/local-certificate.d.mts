/** An EC certificate and key (PEM) naming `localhost` and 127.0.0.1; the certificate is its own authority. */
export function localCertificate(): Promise<{ cert: string; key: string }>;
