# The emulator: App Services client API, EmailJS, control API and inspector on one port.
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
COPY mock-server mock-server
RUN node mock-server/scripts/build.mjs && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
WORKDIR /repo
COPY --from=build /repo/node_modules node_modules
COPY --from=build /repo/package.json ./
COPY --from=build /repo/openapi openapi
COPY --from=build /repo/mock-server mock-server
# The code cache (docs/decisions/0026) where only the node user can write it.
ENV HOST=0.0.0.0 PORT=4000 MOCK_CODE_CACHE=/home/node/emulator.cjs.cache
EXPOSE 4000
USER node
CMD ["node", "mock-server/dist/cli.js"]
