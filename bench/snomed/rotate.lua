-- wrk script: rotate request paths read from $WRK_PATHS (one path per line), like the Hades method's rotating ids.
local paths = {}
local counter = 0

function init(args)
  local file = os.getenv("WRK_PATHS")
  for line in io.lines(file) do
    paths[#paths + 1] = line
  end
  -- Each thread starts at a different place in the list.
  counter = math.random(#paths)
end

function request()
  counter = counter % #paths + 1
  return wrk.format("GET", paths[counter])
end
