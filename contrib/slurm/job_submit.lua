--[[
gpufleet: one job never spans two image versions (docs/day2.md, "Slurm side").

While a pool is moved to a new image version (`gpufleet refresh`), its nodes run two versions;
each node carries its version as the Slurm feature image_<version> (roles/node_labels). This
plugin gives every multi-node job Slurm's "matching OR" constraint over those features,
`[image_<old>|image_<new>]`: all of the job's nodes then share one of them.

The versions in service are one feature per line in FEATURES_FILE (lines starting with # are
comments); `gpufleet refresh start` prints the two to list. With fewer than two listed, jobs
are left as they are. A job that already carries a bracketed constraint is left alone (Slurm
reserves brackets for one matching-OR or multiple-count group) and logged.

Install: copy to the directory of slurm.conf as job_submit.lua and set JobSubmitPlugins=lua
(`scontrol reconfigure` reloads it).
--]]

FEATURES_FILE = "/etc/slurm/gpufleet-image-features"

local NO_VAL = 4294967294   -- slurm's NO_VAL: the option was not given

function gpufleet_read_features(path)
    local features = {}
    local handle = io.open(path, "r")
    if handle == nil then
        return features
    end
    for line in handle:lines() do
        local name = line:match("^%s*([^#%s]+)%s*$")
        if name ~= nil then
            table.insert(features, name)
        end
    end
    handle:close()
    return features
end

-- The constraint a job of `nodes` nodes gets; nil: leave it as it is (and why).
function gpufleet_constraint(current, nodes, features)
    if nodes == nil or nodes == NO_VAL or nodes <= 1 or #features < 2 then
        return nil, nil
    end
    local group = "[" .. table.concat(features, "|") .. "]"
    if current == nil or current == "" then
        return group, nil
    end
    if current:find("[", 1, true) then
        return nil, "has its own bracketed constraint " .. current
    end
    if current:find("|", 1, true) then
        return "(" .. current .. ")&" .. group, nil
    end
    return current .. "&" .. group, nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    local features = gpufleet_read_features(FEATURES_FILE)
    local constraint, why = gpufleet_constraint(job_desc.features, job_desc.min_nodes, features)
    if constraint ~= nil then
        job_desc.features = constraint
        slurm.log_info("gpufleet: job of uid %s on %s nodes: constraint %s", tostring(submit_uid),
                       tostring(job_desc.min_nodes), constraint)
    elseif why ~= nil then
        slurm.log_info("gpufleet: job of uid %s left as it is: %s", tostring(submit_uid), why)
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end

return slurm.SUCCESS
