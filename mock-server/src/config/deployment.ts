/**
 * Where the emulator says its apps are deployed, in one place: the location endpoint's
 * `deployment_model` and `location`, and `context.app.deployment` of functions (its region is
 * the location's, as the service names it). UNCONFIRMED: a global app in Virginia is what a
 * default App Services app reported (docs/decisions/0002).
 */
export const deployment = { model: "GLOBAL", location: "US-VA", providerRegion: "aws-us-east-1" } as const;
