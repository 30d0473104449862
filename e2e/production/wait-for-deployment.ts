/**
 * The journeys' global setup: the rehearsal starts Playwright while it brings the deployment up
 * (so Playwright's own start overlaps it); its control endpoint answers /ready once it is up.
 */
export default async function waitForDeployment(): Promise<void> {
  const control = process.env.REHEARSAL_CONTROL;
  if (!control) throw new Error("REHEARSAL_CONTROL is not set: run the journeys with `npm run rehearse`");
  const response = await fetch(`${control}/ready`);
  if (response.status !== 200)
    throw new Error(`the deployment did not come up: ${((await response.json()) as { error?: string }).error}`);
}
