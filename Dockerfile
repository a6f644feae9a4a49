# skills-mcp serving a team's skills over Streamable HTTP (issue 33). How to run it: docs/deploy.md.
#
#   docker build -t skills-mcp .
#   docker run --read-only -p 8080:8080 \
#     -v "$PWD/skills:/skills:ro" -v "$PWD/auth.yaml:/config/auth.yaml:ro" skills-mcp

# Build: the executable is one bundle (dist/bin.cjs loading dist/skills-mcp.cjs) holding every
# dependency, so the runtime stage needs no node_modules.
FROM node:22-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No scripts: `prepare` would build before the sources are here (the next RUN builds).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build:bin

# Runtime: Node, git (for --skills-git: docs/GIT.md), the bundle, the example skills. Runs as the
# image's `node` user (uid 1000), and writes nothing outside /tmp, so it works with a read-only
# root file system.
FROM node:22-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
  && rm -rf /var/lib/apt/lists/*
# Node's compile cache, the skills' manifests and git sources' clones are kept here when it is
# writable (mount a tmpfs at /tmp with --read-only); when it is not, the first two are not kept,
# and nothing fails (a git source needs it).
ENV XDG_CACHE_HOME=/tmp/skills-mcp-cache
WORKDIR /app
COPY --from=build /src/dist/bin.cjs /src/dist/skills-mcp.cjs ./dist/
COPY package.json ./
COPY examples/skills ./examples/skills
USER node
EXPOSE 8080
# /healthz answers 200 while the process runs (the image has no curl: Node's fetch). A Host of
# 127.0.0.1 with the port listened on passes the server's DNS-rebinding check.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/bin.cjs"]
# Every request must carry a bearer token that /config/auth.yaml accepts (mount it read-only);
# the skills are mounted read-only at /skills. Without an auth file, see docs/deploy.md.
CMD ["serve", "--http", "0.0.0.0:8080", "--auth", "/config/auth.yaml", "--skills-dir", "/skills"]
