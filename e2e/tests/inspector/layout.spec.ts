/**
 * The inspector stays readable with long unbroken values, on a laptop (1,280 px) and a phone
 * (390 px): no horizontal scrolling of the page, column headers never broken inside a word.
 */
import { emulatorUrl, expect, test, webUrl } from "../../fixtures/index.ts";

const long = "x".repeat(600);

test("long values wrap: no horizontal page scroll at 1,280 or 390 px", async ({
  page,
  mock,
  testApp,
  emailjs,
  request,
}) => {
  const { appId } = testApp;
  await mock.POST("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
    params: { path: { appId, database: "db", collection: "notes" } },
    body: { documents: [{ _id: long, [`field${long}`]: long, nested: { deep: long } }] },
  });
  await request.get(`${emulatorUrl}/api/client/v2.0/app/${appId}/location?q=${long}`);
  const sent = await request.post(`${emulatorUrl}/api/v1.0/email/send`, {
    headers: { Origin: webUrl },
    data: {
      user_id: emailjs.publicKey,
      service_id: "local_service",
      template_id: "note_email",
      template_params: { to_email: "bob@example.com", from_name: long, note_title: long, note_body: long },
    },
  });
  expect(sent.status()).toBe(200);
  const { data } = await mock.GET("/_mock/v1/mail", { params: { query: { account: emailjs.publicKey } } });
  const messageId = data!.messages[0]!.id;

  const app = `${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}`;
  const pages = [
    `${emulatorUrl}/_mock/#/emailjs/${encodeURIComponent(emailjs.publicKey)}/mail/${messageId}`,
    `${app}/data/db/notes`,
    `${app}/requests`,
  ];
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 800 });
    for (const url of pages) {
      await page.goto("about:blank"); // a fresh load each time: no view of the previous address lingers
      await page.goto(url);
      await expect(page.locator("#view-heading")).toBeVisible();
      await expect(page.locator("main table, main .empty").first()).toBeVisible();
      // Open what holds the long values.
      for (const summary of await page.locator("main details:not([open]) > summary").all()) {
        if (await summary.isVisible()) await summary.click();
      }
      const sizes = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        window: window.innerWidth,
        // A header broken inside a word is taller than one line of it.
        brokenHeaders: Array.from(document.querySelectorAll("main th"))
          .filter((th) => (th as HTMLElement).offsetParent !== null)
          .filter((th) => {
            const words = (th.textContent ?? "").split(/\s+/);
            const probe = document.createElement("span");
            probe.style.whiteSpace = "nowrap";
            th.appendChild(probe);
            const wordTooWide = words.some((word) => {
              probe.textContent = word;
              return probe.getBoundingClientRect().width > (th as HTMLElement).clientWidth;
            });
            probe.remove();
            return wordTooWide;
          })
          .map((th) => th.textContent),
      }));
      expect(sizes.scroll, `${url} at ${width} px`).toBeLessThanOrEqual(sizes.window);
      expect(sizes.brokenHeaders, `${url} at ${width} px`).toEqual([]);
    }
  }
});
