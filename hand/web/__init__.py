"""The reference Hand's web tools: `web_fetch` (a page as readable Markdown, behind an address
guard), `web_search` (a SearXNG instance) and the `browser_*` tools (Chromium through
Playwright). `add_web_tools` declares the ones the settings turn on."""
