/**
 * The inspector's mail: searched, deleted one by one, read as headers and source; and safe to open —
 * a remote image in a captured mail is not requested unless a person loads it for that message.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { emulatorUrl, expect, expectAccessible, test, webUrl } from "../../fixtures/index.ts";

const pixel = Buffer.from("R0lGODlhAQABAAAAACw=", "base64");

/** A stand-in for a tracker: an image server on loopback that notes every request it gets. */
async function tracker() {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    hits.push(request.url ?? "");
    response.writeHead(200, { "content-type": "image/gif", "cache-control": "no-store" }).end(pixel);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { hits, url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

test("searches and deletes mail, shows headers and source, and loads remote images only on request", async ({
  page,
  mock,
  request,
}) => {
  const created = await mock.POST("/_mock/v1/emailjs/accounts", {
    body: {
      rateLimitPerSecond: 0,
      templates: [
        {
          id: "tracked",
          subject: "{{title}}",
          to: "{{to_email}}",
          from: "news@shop.example",
          html: '<p>{{body}}</p><img src="{{image}}" alt="">',
          text: "{{body}}",
        },
      ],
    },
  });
  const publicKey = created.data!.publicKey;
  const remote = await tracker();
  try {
    for (const [title, to] of [
      ["Weekly", "ada@example.com"],
      ["Receipt", "bob@example.com"],
    ]) {
      const sent = await request.post(`${emulatorUrl}/api/v1.0/email/send`, {
        headers: { Origin: webUrl },
        data: {
          user_id: publicKey,
          service_id: "local_service",
          template_id: "tracked",
          template_params: {
            title,
            to_email: to,
            body: `Hello from the ${title} mail`,
            image: `${remote.url}/pixel.gif?m=${title}`,
          },
        },
      });
      expect(sent.status()).toBe(200);
    }
    const tracked = remote.hits;

    await page.goto(`${emulatorUrl}/_mock/#/emailjs/${encodeURIComponent(publicKey)}/mail`);
    await page.getByLabel("Subject, recipient or text").fill("bob@");
    await page.getByRole("button", { name: "Search" }).click();
    await expect(page.getByRole("table", { name: "1 matching message, newest first" })).toBeVisible();
    await page.getByRole("link", { name: "Receipt" }).click();
    await expect(page.getByRole("heading", { name: "Receipt" })).toBeVisible();

    // The HTML renders, its remote image does not load until asked.
    const body = page.frameLocator('iframe[title="E-mail body: Receipt"]');
    await expect(body.getByText("Hello from the Receipt mail")).toBeVisible();
    await expect(page.getByText("Remote images are blocked (this message has some).")).toBeVisible();
    expect(tracked).toEqual([]);
    await page.getByRole("button", { name: "Load remote images" }).click();
    await expect(page.getByRole("button", { name: "Load remote images" })).toHaveAttribute("aria-pressed", "true");
    await expect.poll(() => tracked).toEqual(["/pixel.gif?m=Receipt"]);

    await page.getByRole("link", { name: "Headers" }).click();
    const headers = page.getByRole("table", { name: /headers, as sent over SMTP/ });
    await expect(headers.getByRole("row", { name: /^Subject / })).toContainText("Receipt");
    await expect(headers.getByRole("row", { name: /^To / })).toContainText("bob@example.com");
    await expectAccessible(page, { strict: true });
    await page.getByRole("link", { name: "Source" }).click();
    await expect(page.getByLabel("Message source")).toContainText("Content-Type: text/html");

    await page.getByRole("button", { name: "Delete message" }).click();
    await expect(page.getByText("No message matches.")).toBeVisible();
    await page.getByRole("link", { name: "Show all" }).click();
    await expect(page.getByRole("table", { name: "1 captured message, newest first" })).toContainText("Weekly");
    // Opening the other message loads nothing remote either.
    await page.getByRole("link", { name: "Weekly" }).click();
    await expect(
      page.frameLocator('iframe[title="E-mail body: Weekly"]').getByText("Hello from the Weekly"),
    ).toBeVisible();
    expect(tracked).toHaveLength(1);
  } finally {
    await remote.close();
    await mock.DELETE("/_mock/v1/emailjs/accounts/{publicKey}", { params: { path: { publicKey } } });
  }
});

test("lists the newest 200 messages of an account that has more, and says how many there are", async ({
  page,
  mock,
  request,
}) => {
  const created = await mock.POST("/_mock/v1/emailjs/accounts", { body: { rateLimitPerSecond: 0 } });
  const publicKey = created.data!.publicKey;
  for (let i = 0; i < 201; i++) {
    const sent = await request.post(`${emulatorUrl}/api/v1.0/email/send`, {
      headers: { Origin: webUrl },
      data: {
        user_id: publicKey,
        service_id: "local_service",
        template_id: "local_template",
        template_params: { to_email: `reader${String(i).padStart(3, "0")}@example.com`, message: "Hi" },
      },
    });
    expect(sent.status()).toBe(200);
  }
  await page.goto(`${emulatorUrl}/_mock/#/emailjs/${encodeURIComponent(publicKey)}/mail`);
  const list = page.getByRole("table", { name: "The newest 200 of 201 captured messages, newest first" });
  await expect(list.getByRole("row", { name: /reader200@example\.com/ })).toBeVisible();
  await expect(list.getByRole("row", { name: /@example\.com/ })).toHaveCount(200);
  await expect(list.getByRole("row", { name: /reader000@example\.com/ })).toHaveCount(0);
});
