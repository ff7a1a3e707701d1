# The ruby-rack HTTP example (examples/http/run.sh ruby-rack PORT), served by puma: GET /healthz
# is never limited; GET /limited is limited by client IP with GCRA 5 per 60 s, burst 5,
# draft-10 fields, policy name "default", no trusted proxies.
require "throttlekit/rack"

use Throttlekit::Rack do |tk|
  tk.safelist("healthz") { |req| req.path == "/healthz" }
  tk.headers = { family: "draft-10", policy_name: "default" }
  tk.throttle("req/ip", limit: 5, period: 60)
end

run ->(_env) { [200, { "Content-Type" => "text/plain" }, ["ok"]] }
