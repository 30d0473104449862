# The web app for production: built with the deployment's settings (every VITE_ variable given as a
# build argument: nothing of the local harness in the bundle), served as static files by nginx with
# a fallback to index.html (the app routes on the client).
FROM node:20-bookworm-slim AS build
WORKDIR /repo
COPY package.json package-lock.json ./
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
RUN npm run build -w web

FROM nginx:1.27-bookworm
COPY docker/web-nginx.conf /etc/nginx/conf.d/default.conf
COPY --from=build /repo/web/dist /usr/share/nginx/html
EXPOSE 8080
