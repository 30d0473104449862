/** A GET request to one of the app's HTTPS endpoints (call-endpoint.ts). */
import { defineRoute } from "../route.ts";
import { callEndpoint } from "./call-endpoint.ts";

export default defineRoute("callEndpointGet", "none", callEndpoint);
