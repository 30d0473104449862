# The site of the production profile: the web app built for the deployment (every VITE_ variable
# given as a build argument: nothing of the local harness in the bundle) and Debian's nginx — the
# one `npm run rehearse` tests — with docker/nginx/app-services.conf: TLS, the client API balanced
# over the server's replicas, the web app with its client-side routes, security headers.
FROM node:20-bookworm-slim AS build
WORKDIR /repo
COPY package.json package-lock.json ./
# Fixes to dependencies, applied by the install (patches/README.md).
COPY patches patches
COPY openapi/package.json openapi/
COPY mock-server/package.json mock-server/
COPY web/package.json web/
COPY e2e/package.json e2e/
RUN npm ci --no-audit --no-fund
COPY openapi openapi
COPY web web
ARG VITE_APP_SERVICES_BASE_URL
ARG VITE_APP_SERVICES_APP_ID
ARG VITE_EMAILJS_ORIGIN=https://api.emailjs.com
ARG VITE_EMAILJS_PUBLIC_KEY
ARG VITE_EMAILJS_SERVICE_ID=default_service
ARG VITE_EMAILJS_CONTACT_TEMPLATE_ID=contact_form
ARG VITE_EMAILJS_NOTE_TEMPLATE_ID=note_email
ARG VITE_AUTH_CONFIRMATION=email
ARG VITE_AUTH_RESET=email
RUN npm run build -w web

FROM debian:bookworm-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends nginx \
  && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default /usr/share/nginx/html/* \
  && ln -sf /dev/stderr /var/log/nginx/error.log
COPY docker/nginx/app-services.conf docker/nginx/http-redirect.conf /etc/nginx/conf.d/
COPY docker/nginx/site/ /etc/nginx/site/
COPY --from=build /repo/web/dist /usr/share/nginx/html
EXPOSE 80 443
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
