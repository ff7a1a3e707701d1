# The ruby-rails HTTP example (examples/http/run.sh ruby-rails PORT): a one-file Rails
# application (Debian's railties and actionpack) with Throttlekit::Rack in its middleware stack,
# served by puma. GET /healthz is never limited; GET /limited is limited by client IP with GCRA 5
# per 60 s, burst 5, draft-10 fields, policy name "default", no trusted proxies.
require "action_controller/railtie"
require "throttlekit/rack"

class ExampleApp < Rails::Application
  config.eager_load = false
  config.logger = Logger.new(nil)
  config.secret_key_base = "throttlekit-example-not-a-secret"
  config.hosts.clear

  config.middleware.use Throttlekit::Rack do |tk|
    tk.safelist("healthz") { |req| req.path == "/healthz" }
    tk.headers = { family: "draft-10", policy_name: "default" }
    tk.throttle("req/ip", limit: 5, period: 60)
  end

  routes.append do
    get "/healthz" => "probe#ok"
    get "/limited" => "probe#ok"
  end
end

class ProbeController < ActionController::API
  def ok
    render plain: "ok"
  end
end

ExampleApp.initialize!
run ExampleApp
