# The web app, built for the emulator's published address and served as static files.
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
ARG VITE_APP_SERVICES_BASE_URL=http://127.0.0.1:4000
ARG VITE_APP_SERVICES_APP_ID=local-app
ARG VITE_EMAILJS_ORIGIN=http://127.0.0.1:4000
ARG VITE_EMAILJS_PUBLIC_KEY=local-public-key
RUN npm run build -w web

FROM node:20-bookworm-slim
WORKDIR /repo
COPY --from=build /repo /repo
EXPOSE 4173
USER node
CMD ["npx", "vite", "preview", "--config", "web/vite.config.ts", "--host", "0.0.0.0", "--port", "4173", "--strictPort"]
