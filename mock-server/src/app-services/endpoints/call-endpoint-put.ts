/** A PUT request to one of the app's HTTPS endpoints (call-endpoint.ts). */
import { defineRoute } from "../route.ts";
import { callEndpoint } from "./call-endpoint.ts";

export default defineRoute("callEndpointPut", "none", callEndpoint);
